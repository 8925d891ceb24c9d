#!/bin/sh
# pid1-signal.sh — the wrapped command of the PID 1 / `podman stop` test.
# Runs as `fitrun -- /t/pid1-signal.sh` (the image's ENTRYPOINT), records who
# PID 1 is, says it is ready, and on SIGTERM records the signal and then dies
# of it (default action), so fitrun must exit 128+15 = 143.
# A background sleep is left behind on purpose: what remains of the process
# group is fitrun's to terminate before it exits.
cat /proc/1/comm >/out/pid1
trap 'echo TERM >>/out/signals; trap - TERM; kill -TERM $$' TERM
sleep 300 &
echo ready >/out/ready
while :; do
    sleep 1 &
    wait $!    # a builtin wait returns at once when a trapped signal arrives
done
