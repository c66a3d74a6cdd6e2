"""The `rcabot lab` command: record fresh shops under faults (lab.record), or keep an older
recording's warm-up as its fault-free stretch (lab.normal). The lab's own dependencies are
loaded here only, so no other command pays for them."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
import time
from pathlib import Path

from rca.errors import InputError
from rca.windows import parse_duration


async def do_lab(args: argparse.Namespace) -> int:
    if args.lab_command == "normal":
        return _keep_normal(args.recordings)
    from lab.faults import FAMILIES
    from lab.record import record, seeds_of

    seeds = seeds_of(args.seeds)
    families = tuple(f.strip() for f in args.families.split(",") if f.strip()) if args.families else FAMILIES
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise InputError(f"--families: unknown {', '.join(unknown) or 'none given'}; known: {', '.join(FAMILIES)}")
    if args.harmless < 0:
        raise InputError("--harmless: a count of changes, 0 or more")
    spacing, duration = _duration_range(args.spacing, "--spacing"), _duration_range(args.duration, "--duration")
    started = time.monotonic()
    print(f"recording shops {', '.join(map(str, seeds))} into {args.out} ({args.faults} faults each)", file=sys.stderr)
    stop = threading.Event()  # SIGINT or SIGTERM: every shop's processes stopped, none left behind
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        done = await asyncio.to_thread(
            record,
            seeds,
            args.out,
            faults=args.faults,
            warmup=parse_duration(args.warmup),
            tail=parse_duration(args.tail),
            rate=args.rate,
            spacing=spacing,
            duration=duration,
            families=families,
            harmless=args.harmless,
            parallel=args.parallel,
            stop=stop,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if stop.is_set():
        print(
            f"stopped by a signal: {len(done)} of {len(seeds)} shops recorded, the others' processes stopped",
            file=sys.stderr,
        )
        return 130
    print(
        f"recorded {len(done)} of {len(seeds)} shops in {time.monotonic() - started:.0f} s; "
        f"evaluate: rcabot eval {args.out} --engine lats,baro,linear-multi"
    )
    return 0 if len(done) == len(seeds) else 1


def _keep_normal(paths: list[Path]) -> int:
    from lab.normal import described, keep_normal

    recordings = sorted({p.parents[2] for path in paths for p in path.glob("**/rca_data/*/lab-fault_list.json")})
    if not recordings:
        raise InputError(f"no lab recording (rca_data/<day>/lab-fault_list.json) under {', '.join(map(str, paths))}")
    for recording in recordings:
        kept = keep_normal(recording)
        print(f"{recording}: {described(kept)} of its warm-up kept as construct_data")
    return 0


def _duration_range(text: str, flag: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    a, b = parse_duration(low), parse_duration(high or low)
    if b < a:
        raise InputError(f"{flag}: {text!r} ends before it starts")
    return a, b
