#!/bin/sh
# What `spark status` asks one node (status.ts fills the values and reads the answer): one
# tagged line per fact, so one ssh round trip answers all of them; a fact the node cannot give
# is a line saying why, never a failed script.
spark=@SPARK@
docker=@DOCKER@
name=@CONTAINER@
pack_dir=@PACK_DIR@
printf 'spark %s\n' "$("$spark" --version 2>/dev/null | head -n 1)"
if state=$("$docker" inspect --format '{{.State.Status}}|{{.State.StartedAt}}|{{.RestartCount}}|{{.State.ExitCode}}|{{.State.FinishedAt}}' "$name" 2>&1); then
  printf 'inspect %s\n' "$state"
  "$docker" logs --tail 2000 "$name" 2>&1 | grep -oE '(libengram_rows|librow_store): [a-z_]+=.*' | tail -n 1 | sed 's/^/stats /'
  case $state in
    exited* | dead*) "$docker" logs --tail 5 "$name" 2>&1 | sed 's/^/tail /' ;;
  esac
else
  printf 'inspect-error %s\n' "$(printf '%s' "$state" | tail -n 1)"
fi
df -Pk "$pack_dir" 2>/dev/null | awk 'NR == 2 { print "df " $4 " " $2 }'
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits 2>/dev/null | sed 's/^/gpu /'
fi
