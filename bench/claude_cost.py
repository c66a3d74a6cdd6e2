"""Model calls and tokens per investigation with the Claude reasoner.

Full investigations of the labelled cases under PATH run through the real anthropic client
against a local stand-in of the Messages API that answers with a scripted model (following
the engine's priors) and counts tokens from the requests, with prompt caching as the API
does it. Reports calls and input / cache-write / cache-read / output tokens per investigation
against the issue's bound (20 calls, 60K tokens) and the paper's 53.1 calls and 156K tokens,
per phase (proposal, reflection, handoff, decision), and how many investigations said their
model budget was spent (only a budget too small for the verdict's own call is).

    .venv/bin/python -m bench.claude_cost ../shared/datasets [--match TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

from bot.terminal import ProgressBar
from rca.engines import build_engine
from rca.reasoners import PHASES
from rca.reasoners.claude import ClaudeConfig, ClaudeReasoner
from rca.sources.datasets import find_cases
from tests.rca.reasoners.anthropic_standin import MessagesStandIn


async def main(path: Path, match: str) -> int:
    cases = [c for c in find_cases(path) if match in c.id]
    api = MessagesStandIn()
    await api.start()
    rows = []
    phases: dict[str, list[tuple[int, int]]] = {p: [] for p in PHASES[:4]}
    partial = 0
    progress = ProgressBar()
    try:
        claude = ClaudeReasoner(ClaudeConfig(api_key=api.api_key, base_url=api.base_url))
        engine = build_engine("lats", reasoner=claude)
        for i, case in enumerate(cases, start=1):
            d = await engine.investigate(case.incident)
            c = d.cost
            hit = bool(d.ranking) and d.ranking[0].service == case.label.service
            rows.append((c.llm_calls, c.llm_input_tokens, c.llm_cached_tokens, c.llm_output_tokens, hit))
            spent = {p: (calls, tokens) for p, calls, tokens in c.llm_phases}
            for p in phases:
                phases[p].append(spent.get(p, (0, 0)))
            partial += any("model budget spent" in m for m in d.missing)
            progress(i, len(cases), case.id)
    finally:
        await api.stop()
    if not rows:
        print("no cases", file=sys.stderr)
        return 1
    calls = [r[0] for r in rows]
    total = [r[1] + r[2] + r[3] for r in rows]
    print(f"{len(rows)} investigations (scripted model; the engine, search and budget are the real ones)")
    print(f"calls per investigation:  mean {statistics.mean(calls):.1f}  max {max(calls)}   (bound 20; paper 53.1)")
    print(
        f"tokens per investigation: mean {statistics.mean(total):,.0f}  max {max(total):,}   (bound 60,000; paper 156,000)"
    )
    print(
        f"  of which input {statistics.mean(r[1] for r in rows):,.0f}, cache reads {statistics.mean(r[2] for r in rows):,.0f}, "
        f"output {statistics.mean(r[3] for r in rows):,.0f} (means)"
    )
    print("per phase (means per investigation; handoff summaries are written offline):")
    for p, spent in phases.items():
        print(
            f"  {p:<11} calls {statistics.mean(c for c, _ in spent):5.1f}   tokens {statistics.mean(t for _, t in spent):8,.0f}"
        )
    print(f"investigations reporting a spent model budget: {partial} of {len(rows)}")
    print(f"AC@1 with the scripted model: {sum(r[4] for r in rows) / len(rows):.3f}")
    return 0 if max(calls) <= 20 and max(total) <= 60_000 else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--match", default="")
    args = ap.parse_args()
    raise SystemExit(asyncio.run(main(args.path, args.match)))
