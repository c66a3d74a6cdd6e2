"""Who may act in which channel, and the time zone each user reads in, as Slack tells."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.verdicts import ALERTMANAGER

log = logging.getLogger("rcabot.slack")
GROUP_TTL = 300.0  # seconds a user group's members are trusted before they are read again


class People:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        allowed_channels: frozenset[str] = frozenset(),
        allowed_users: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.allowed_channels = allowed_channels
        self.allowed_users = allowed_users  # user ids, and user-group ids (S...)
        self.clock = clock
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # user-group id -> (read at, members)
        self._zones: dict[str, str] = {}  # user id -> the time zone Slack says they read in

    async def may_act(self, *, user: str, channel: str) -> bool:
        if self.allowed_channels and channel not in self.allowed_channels:
            return False
        if not self.allowed_users or user in self.allowed_users:
            return True
        for group in (g for g in self.allowed_users if g.startswith("S")):
            if user in await self._members(group):
                return True
        return False

    async def zone(self, user: str) -> str:
        """The user's time zone as Slack's users.info gives it (IANA name), read once; UTC for
        an alert, or where Slack will not say or names a zone not known here."""
        if user == ALERTMANAGER or not user:
            return "UTC"
        if user not in self._zones:
            tz = "UTC"
            try:
                found = str(((await self.client.users_info(user=user)).get("user") or {}).get("tz") or "UTC")
                ZoneInfo(found)
                tz = found
            except (SlackApiError, ValueError, ZoneInfoNotFoundError) as exc:
                log.info("no time zone for %s: %s", user[:20], type(exc).__name__)
            self._zones[user] = tz
        return self._zones[user]

    async def _members(self, group: str) -> frozenset[str]:
        """A user group's members, read at most every GROUP_TTL seconds (none when Slack will not say)."""
        cached = self._groups.get(group)
        if cached is not None and self.clock() - cached[0] < GROUP_TTL:
            return cached[1]
        try:
            users = frozenset((await self.client.usergroups_users_list(usergroup=group)).get("users") or [])
        except SlackApiError as exc:
            log.warning("cannot read user group %s: %s", group, exc.response.get("error", exc))
            users = frozenset()
        self._groups[group] = (self.clock(), users)
        return users
