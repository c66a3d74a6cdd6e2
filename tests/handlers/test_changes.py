"""Changes posted to the bot: the three payload shapes it reads, and what it refuses."""

from __future__ import annotations

import json

import pytest

from handlers.changes import MAX_BODY, parse_change
from rca.changes import Change, ChangeKind, within
from rca.errors import InputError

NOW = 1_800_000_000.0


def parse(doc: object) -> Change | None:
    return parse_change(json.dumps(doc).encode(), now=lambda: NOW)


def change(doc: object) -> Change:
    c = parse(doc)
    assert c is not None
    return c


def github(state: str, **deployment: object) -> dict[str, object]:
    """GitHub's deployment_status event, as much of it as GitHub sends that matters here."""
    return {
        "action": "created",
        "deployment_status": {
            "state": state,
            "created_at": "2026-12-04T09:00:00Z",
            "creator": {"login": "octocat"},
            "target_url": "https://ci.example.com/runs/42",
            "environment": "production",
        },
        "deployment": {
            "sha": "a84d88e7554fc1fa21bcbc4efae3c782a70d2b9d",
            "ref": "main",
            "task": "deploy",
            **deployment,
        },
        "repository": {"name": "orders", "full_name": "shop/orders", "html_url": "https://github.com/shop/orders"},
        "sender": {"login": "octocat"},
    }


def test_a_deploy_marker_is_a_change_with_its_versions_and_link() -> None:
    c = change(
        {
            "service": "orders",
            "kind": "deploy",
            "before": "1.4.2",
            "after": "1.4.3",
            "who": "ci",
            "link": "https://ci.example.com/runs/7",
            "time": "2026-12-04T09:00:00Z",
        }
    )
    assert c.kind is ChangeKind.DEPLOY and c.source == "marker"
    assert c.describe() == "orders 1.4.2 → 1.4.3 (deploy by ci)"
    assert c.time == 1_796_374_800.0 and c.link == "https://ci.example.com/runs/7"
    # no time: when it was received; no kind: a deploy
    bare = change({"service": "orders", "after": "1.4.3"})
    assert bare.time == NOW and bare.kind is ChangeKind.DEPLOY
    assert change({"service": "orders", "kind": "CONFIG"}).kind is ChangeKind.CONFIG


def test_a_successful_github_deployment_is_a_deploy_and_a_pending_one_is_no_change_yet() -> None:
    c = change(github("success"))
    assert (c.service, c.after, c.who, c.source) == ("orders", "a84d88e7554f", "octocat", "github")
    assert c.link == "https://ci.example.com/runs/42"
    assert change(github("success", payload={"service": "payments"})).service == "payments"
    for state in ("pending", "in_progress", "failure", "error", "queued"):
        assert parse(github(state)) is None


def test_an_argo_cd_sync_that_succeeded_is_a_deploy_of_the_application() -> None:
    doc = {
        "app": "orders",
        "revision": "9f2c1e0b7a6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b",
        "phase": "Succeeded",
        "finishedAt": "2026-12-04T09:00:00Z",
        "url": "https://argocd.example.com/applications/orders",
    }
    c = change(doc)
    assert (c.service, c.after, c.source) == ("orders", "9f2c1e0b7a6d", "argocd")
    assert parse({**doc, "phase": "Failed"}) is None
    assert change({**doc, "service": "orders-api"}).service == "orders-api"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"kind": "deploy"}).encode(), "service"),
        (json.dumps({"service": "orders; drop table changes"}).encode(), "not a service name"),
        (json.dumps({"service": "<@U123>"}).encode(), "not a service name"),
        (json.dumps({"service": "orders", "kind": "reboot"}).encode(), "kind"),
        (json.dumps({"service": "orders", "time": "yesterday"}).encode(), "RFC 3339"),
        (json.dumps({"service": "orders", "time": "2026-12-04T09:00:00"}).encode(), "time zone"),
        (json.dumps({"service": "orders", "after": "x" * 5000}).encode(), "at most"),
        (json.dumps({"deployment_status": {"state": "success"}, "deployment": []}).encode(), "deployment"),
        (b" " * (MAX_BODY + 1), "at most"),
    ],
)
def test_what_cannot_be_read_is_refused_with_its_reason(body: bytes, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_change(body, now=lambda: NOW)


def test_a_link_that_is_not_a_plain_web_link_is_dropped_not_shown() -> None:
    for link in ("javascript:alert(1)", "https://x.example.com/a|<!channel>", "ftp://x.example.com/f"):
        assert change({"service": "orders", "link": link}).link == ""


def test_changes_within_a_window_are_listed_earliest_first_and_to_the_services_named() -> None:
    a = change({"service": "orders", "time": "2026-12-04T09:10:00Z"})
    b = change({"service": "payments", "time": "2026-12-04T09:05:00Z"})
    late = change({"service": "orders", "time": "2026-12-04T10:00:00Z"})
    start, end = 1_796_374_800.0, 1_796_374_800.0 + 1800
    assert within([a, b, late], start, end) == [b, a]
    assert within([a, b, late], start, end, ["orders"]) == [a]
