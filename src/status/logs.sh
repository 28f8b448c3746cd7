#!/bin/sh
# One node's part of `spark logs` (logs.ts fills the values): the container's log with docker's
# timestamps, stdout and stderr together. The reader of docker logs is tied to this session's
# stdin, which spark holds open: when spark ends it (Ctrl-C, the end of the merge) or ssh dies,
# stdin closes and the watcher stops docker logs, so a `--follow` never outlives the session
# (a remote docker logs -f whose ssh is gone would otherwise run until its next write fails).
docker=@DOCKER@
name=@CONTAINER@
# An asynchronous command's stdin is /dev/null: the session's stdin is kept as fd 3 for the watcher.
exec 3<&0
"$docker" logs --timestamps @ARGS@ "$name" 2>&1 3<&- &
pid=$!
{
  cat <&3 >/dev/null
  kill "$pid" 2>/dev/null
} >/dev/null 2>&1 &
exec 3<&-
wait "$pid"
