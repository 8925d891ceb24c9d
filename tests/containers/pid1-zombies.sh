#!/bin/sh
# pid1-zombies.sh — orphans must be reaped by PID 1 (fitrun).
# Each inner sh starts a background sleep and exits at once, so the sleep is
# reparented to PID 1; while it sleeps its parent must be 1, after it exits
# nothing in the container may be left as a zombie (state Z).
: >/out/orphans
for _ in 1 2 3 4 5; do
    sh -c 'sleep 1 & echo $! >>/out/orphans'
done
for p in $(cat /out/orphans); do
    echo "$p $(cut -d' ' -f4 "/proc/$p/stat" 2>/dev/null || echo gone)" >>/out/ppids
done
sleep 3
z=0
for f in /proc/[0-9]*/stat; do
    state=$(cut -d' ' -f3 "$f" 2>/dev/null) || continue
    if [ "$state" = Z ]; then z=$((z + 1)); cat "$f" >>/out/zombies; fi
done
echo "$z" >/out/nzombies
