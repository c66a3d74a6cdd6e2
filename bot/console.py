"""`rcabot console`: the Slack experience in a terminal, with no Slack at all.

Type `/rca <service> [window]` to investigate (the stream prints live, then the verdict); then
`repair`, `verify`, `correct`, `wrong [service]`, `chart [metric] [of service]`, or any
question about the last verdict. `/rca status`, `/rca summary`, `/rca help`, `quit`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot import blockkit, replies
from bot.desk import Desk
from bot.terminal import render_event, render_verdict
from bot.verdicts import AlreadyRunning
from handlers.requests import USAGE, Kind, parse_rca_command
from rca.errors import InputError, RcaError
from rca.explain import HELP, ChartRequest
from rca.star.repair import RepairStep
from rca.telemetry import to_iso

PROMPT = "rcabot> "
MORE = (
    "Next: `repair`, `verify`, `correct`, `wrong [service]`, `chart [metric] [of service]`, "
    "or ask about the verdict (`why ...`, `why not ...`, `timeline`, `what next?`)."
)
CHANNEL, USER = "console", "you"


class Console:
    def __init__(
        self,
        desk: Desk,
        *,
        read: Callable[[], Awaitable[str | None]],
        write: Callable[[str], None],
        charts: Path = Path("."),
    ) -> None:
        self.desk = desk
        self.read = read
        self.write = write
        self.charts = charts
        self.current: str | None = None  # the investigation follow-ups are about

    async def run(self) -> None:
        self.write("rcabot console — type /rca <service> [window], /rca help, or quit")
        while (line := await self.read()) is not None:
            line = line.strip()
            if line in ("quit", "exit", r"\q"):
                break
            if line:
                try:
                    await self.handle(line)
                except RcaError as exc:
                    self.write(f"error: {exc}")

    async def handle(self, line: str) -> None:
        if line.startswith("/rca"):
            await self._command(line[4:])
            return
        if self.current is None:
            self.write("No investigation yet. " + USAGE.replace("*", ""))
            return
        word, _, rest = line.partition(" ")
        verb = word.lower()
        if verb == "repair":
            await self._repair()
        elif verb == "verify":
            self.write(blockkit.as_text(replies.verification(await self.desk.followups.verify(self.current))[1]))
        elif verb == "correct":
            await self.desk.followups.feedback(self.current, user=USER, correct=True)
            self.write("Marked correct.")
        elif verb == "wrong":
            await self.desk.followups.feedback(self.current, user=USER, correct=False, true_cause=rest.strip())
            self.write("Marked wrong" + (f"; true cause {rest.strip()}." if rest.strip() else "."))
        elif verb in ("help", "?"):
            self.write(HELP.replace("*", "").replace("•", "-"))
        else:
            reply, chart = await self.desk.followups.ask(self.current, line, user=USER)
            self.write(reply.text.replace("*", ""))
            if chart is not None:
                self.write(f"chart saved to {self._save(chart.png, reply.chart)}")

    async def _command(self, text: str) -> None:
        try:
            request = parse_rca_command(text)
        except InputError as exc:
            self.write(f"{exc}\n{USAGE.replace('*', '')}")
            return
        if request.kind is Kind.HELP:
            self.write(USAGE.replace("*", ""))
        elif request.kind is Kind.STATUS:
            runs = self.desk.running()
            self.write("\n".join(f"{r.service} since {to_iso(r.started)}" for r in runs) or "Nothing running.")
        elif request.kind is Kind.SUMMARY:
            end = time.time()
            s = await self.desk.summary(start=end - 86400, end=end, channel=CHANNEL)
            self.write(f"{len(s.rows)} investigation(s) in the last day")
            for r in s.rows:
                self.write(f"  {r.service:<30} {r.status:<11} {r.top_service} ({r.top_fault})")
        else:
            try:
                run = await self.desk.open(request.service, request.window, channel=CHANNEL, user=USER)
            except AlreadyRunning as exc:
                self.write(str(exc))
                return
            async for event in self.desk.investigate(run):
                shown = render_event(event)
                if shown:
                    self.write(shown)
            self.current = run.id
            self.write("")
            self.write(render_verdict(await self.desk.casebook.verdict(run.id)))
            chart = await self.desk.followups.chart(run.id)
            if chart is not None:
                self.write(f"chart of {chart.title} saved to {self._save(chart.png, None)}")
            self.write(MORE)

    async def _repair(self) -> None:
        assert self.current is not None

        def shown(s: RepairStep) -> None:
            self.write(
                f"  round {s.round} {s.route}: {s.stage} <- {s.patch}  S {s.before:.2f} -> {s.after:.2f}"
                + ("" if s.committed else " (not kept)")
            )

        before, after, result = await self.desk.followups.repair(self.current, progress=shown)
        self.write(blockkit.as_text(replies.repair(before, result)[1]))  # the words Slack shows
        self.write(render_verdict(after))

    def _save(self, png: bytes, request: ChartRequest | None) -> Path:
        name = f"rcabot-{self.current}-{(request.metric if request else 'signal')}"
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:120]
        path = self.charts / f"{safe}.png"
        path.write_bytes(png)
        return path
