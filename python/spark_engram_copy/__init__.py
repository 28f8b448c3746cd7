"""The modules behind spark_engram_reader (import from there: it is the public path)."""
