"""A retry storm in one lab service, in process: the caller is the lab's own `Service`, its
callee a stand-in that answers `/work` as a lab service does, each call as slowly as the test
says. A storm cuts each call at the time the callee usually takes to answer, so it sends calls
again even where the callee has not slowed (a storm cut at a fixed time a fast callee never
reaches sends nothing again, and its label names a cause that did nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, web

from lab.service import CALL_TIMEOUT, RETRY_TIMEOUT, Service
from lab.shop import ServiceSpec, Shop

USUAL = 0.05  # seconds the callee takes to answer before the storm
FAST, SLOW = 0.005, 0.25  # during it: each item's first call slow, well over the usual; the rest fast


class Callee:
    """Answers `/work` as usual, or once `slow_first` is set, each item's first call slowly and
    the others fast; counts the calls it served."""

    def __init__(self) -> None:
        self.slow_first, self.seen, self.served = False, set[str](), 0

    async def work(self, request: web.Request) -> web.Response:
        item = request.query.get("item", "")
        delay = (SLOW if item not in self.seen else FAST) if self.slow_first else USUAL
        self.seen.add(item)
        await asyncio.sleep(delay)
        self.served += 1
        return web.json_response({"service": "callee", "items": [request.query.get("item")]})


async def _storm(tmp_path: Path, *, learn: int, storm_on: bool, calls: int) -> tuple[int, int, float]:
    """Requests answered and calls served during `calls` calls, and the storm's cut then."""
    callee = Callee()
    app = web.Application()
    app.router.add_get("/work", callee.work)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    shop = Shop(1, "caller", (ServiceSpec("caller", ("callee",), "", 1.0), ServiceSpec("callee", (), "", 1.0)))
    caller = Service(shop, shop.services[0], {"callee": port}, tmp_path)
    caller.client = ClientSession(timeout=ClientTimeout(total=CALL_TIMEOUT))
    try:
        for item in range(learn):
            await caller._call("callee", item)
        if storm_on:
            caller.faults.start("retry", 60)
        cut = caller.storm_timeout("callee")
        callee.slow_first, callee.seen, callee.served = True, set(), 0
        answered = 0
        for item in range(calls):
            try:
                await caller._call("callee", item)
                answered += 1
            except Exception:
                pass
        await asyncio.sleep(2 * SLOW)  # the calls given up on finish on the callee's side
        return answered, callee.served, cut
    finally:
        await caller.client.close()
        await runner.cleanup()


def test_a_storm_cuts_calls_at_the_callee_s_usual_answer_time_and_sends_the_slower_ones_again(
    tmp_path: Path,
) -> None:
    answered, served, cut = asyncio.run(_storm(tmp_path, learn=20, storm_on=True, calls=10))
    assert USUAL <= cut < SLOW  # the median answer time learnt, the caller's own overhead in it
    assert answered == 10  # each slow call given up on was answered when sent again
    assert served >= 20  # each call's first arrival given up on and sent again: two or more each


def test_without_a_storm_every_call_is_waited_for_once(tmp_path: Path) -> None:
    answered, served, _ = asyncio.run(_storm(tmp_path, learn=20, storm_on=False, calls=10))
    assert (answered, served) == (10, 10)


def test_a_storm_begun_before_any_call_was_answered_cuts_at_the_fixed_time(tmp_path: Path) -> None:
    _, _, cut = asyncio.run(_storm(tmp_path, learn=0, storm_on=True, calls=0))
    assert cut == RETRY_TIMEOUT
