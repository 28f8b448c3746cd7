"""What a layer and a copy of either kind share: dequantization from rows(), lookup by layer."""

import numpy as np

from .checked import FormatError


def _fp8_e4m3_table():
    """float32 value of every F8_E4M3 (e4m3fn) byte: bias 7, no infinities, 0x7F/0xFF NaN."""
    b = np.arange(256, dtype=np.uint32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = ((b >> 3) & 0xF).astype(np.int32)
    man = (b & 0x7).astype(np.float64)
    normal = (1.0 + man / 8.0) * np.exp2(exp - 7)
    subnormal = (man / 8.0) * np.exp2(-6.0)
    v = sign * np.where(exp == 0, subnormal, normal)
    v[(b & 0x7F) == 0x7F] = np.nan
    return v.astype(np.float32)


def _e8m0_table():
    """float32 value of every F8_E8M0 byte: 2^(e - 127); 0xFF is NaN."""
    v = np.exp2(np.arange(256, dtype=np.float64) - 127.0)
    v[255] = np.nan
    return v.astype(np.float32)


FP8_E4M3 = _fp8_e4m3_table()
E8M0 = _e8m0_table()


class _Layer:
    """What both kinds of layer share: dequantization from rows()."""

    def weights(self, ids):
        return self.rows(ids)[:, : self.dim]

    def scales(self, ids):
        return self.rows(ids)[:, self.dim :]

    def dequantize(self, ids):
        """float32 [n, D]: fp8 weight x 2^(e - 127), one scale byte per 32 columns."""
        r = self.rows(ids)
        return FP8_E4M3[r[:, : self.dim]] * np.repeat(E8M0[r[:, self.dim :]], 32, axis=1)


class Copy:
    """A copy's layers by number (self.layers, filled by the kind's constructor)."""

    def layer(self, layer_id):
        if layer_id not in self.layers:
            raise FormatError(f"layer {layer_id} is not in this copy (layers {sorted(self.layers)})")
        return self.layers[layer_id]

    def engram_rows(self):
        """The SPARK_ENGRAM_ROWS value this copy serves, e.g. '1:0:96001542,14:0:96004170'."""
        return ",".join(f"{l.layer}:{l.start}:{l.end}" for l in sorted(self.layers.values(), key=lambda l: l.layer))
