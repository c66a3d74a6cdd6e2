"""The one exception tree of the engine.

    RcaError
    ├── InputError            a value typed by a person (window, service name) is not valid
    │   └── WindowError
    ├── DataError             a file or payload could not be parsed
    │   ├── MalformedFile     names the file and what is wrong with it
    │   └── LayoutNotFound    no known dataset layout under a path
    └── EngineError           an engine could not run (unknown name, bad configuration)

Expected outcomes (a missing modality, no anomaly found) are values, not exceptions.
"""

from __future__ import annotations

from pathlib import Path


class RcaError(Exception):
    """Base of every error the engine raises on purpose."""


class InputError(RcaError, ValueError):
    """A value given by a person is not valid; the message says what is expected."""


class WindowError(InputError):
    """A time window could not be parsed."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"bad window {text!r}: {reason}")
        self.text = text
        self.reason = reason


class DataError(RcaError):
    """Telemetry or a dataset could not be read."""


class MalformedFile(DataError):
    """A file exists but its content does not fit its layout."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class LayoutNotFound(DataError):
    """No known dataset layout was found under a path."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"{path}: no dataset layout found (expected a Nezha layout with rca_data/ "
            "or a PetShop layout with graph.csv and issue folders)"
        )
        self.path = Path(path)


class EngineError(RcaError):
    """An engine could not be built or run."""
