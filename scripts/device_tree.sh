#!/usr/bin/env bash
# Make the working tree light enough to travel to a lent GPU machine, and whole again after:
#
#     scripts/device_tree.sh size      # MiB that would travel: tracked and untracked-not-ignored files, and CARRY
#     scripts/device_tree.sh park      # move the paths below out of the checkout (to ../device-parked/)
#     scripts/device_tree.sh unpark    # move them back
#
# A lent device takes the working tree plus the git-ignored paths named in its `carry`, 64 MiB in all; the tracked
# tree is ~81 MB, most of it checkpoints that a training run there does not read. PARKED lists them; CARRY (default
# artifacts/carry, where scripts/pack_data.py puts the packed data) is counted by `size`. Park only while nobody
# commits in this checkout: git sees the parked files as deleted until `unpark`.
set -euo pipefail
cd "$(dirname "$0")/.."
PARKED=(checkpoints/multi30k-small checkpoints/news-small/snapshots)
CARRY=${CARRY:-artifacts/carry}
AWAY=${AWAY:-../device-parked}

travelling_bytes() {     # (du skips the parked files, which git still lists)
    { git ls-files -z --cached --others --exclude-standard; if [ -e "$CARRY" ]; then find "$CARRY" -type f -print0; fi; } |
        { xargs -0 -r du -bc 2>/dev/null || true; } | awk '$2 == "total" { n += $1 } END { print n + 0 }'
}

case "${1:-size}" in
    size)
        bytes=$(travelling_bytes)
        echo "$(python -c "print(round($bytes / 2 ** 20, 1))") MiB would travel (the device takes 64 MiB)"
        [ "$bytes" -le $((64 * 2 ** 20)) ] || { echo "too much: scripts/device_tree.sh park" >&2; exit 1; } ;;
    park)
        for path in "${PARKED[@]}"; do
            [ -e "$path" ] || continue
            mkdir -p "$AWAY/$(dirname "$path")"
            mv "$path" "$AWAY/$path"
            echo "parked $path"
        done
        "$0" size ;;
    unpark)
        for path in "${PARKED[@]}"; do
            [ -e "$AWAY/$path" ] || continue
            [ -e "$path" ] && { echo "device_tree: $path exists here and in $AWAY: leaving both" >&2; exit 1; }
            mv "$AWAY/$path" "$path"
            echo "back: $path"
        done ;;
    *)
        echo "usage: scripts/device_tree.sh size|park|unpark" >&2; exit 2 ;;
esac
