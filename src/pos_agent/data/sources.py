"""The data sets `pos data` knows: where each comes from, under which licence, and which
environment variable points an environment at a copy of one's own."""

from __future__ import annotations

from dataclasses import dataclass

from pos_agent.data import clindiag, loca, nezha
from pos_agent.data.acquire import Pinned
from pos_agent.data.errors import DataError


@dataclass(frozen=True)
class DataSource:
    """One data set: its upstream, its licence and how the environments find it."""

    name: str
    title: str
    licence: str
    env_var: str
    """The environment variable that points the environments at a copy (overrides the cache)."""
    environments: tuple[str, ...]
    upstream: str
    """Where it comes from, in words: repository, commit, folder."""
    pinned: Pinned | None = None
    """For data taken from a git repository at one commit; None for release archives."""
    note: str = ""

    @property
    def commit(self) -> str:
        return self.pinned.commit if self.pinned else ""


SOURCES: dict[str, DataSource] = {
    source.name: source
    for source in (
        DataSource(
            name="alfworld",
            title="ALFWorld games (json_2.1.1: train, valid_seen, valid_unseen)",
            licence="MIT",
            env_var="ALFWORLD_DATA",
            environments=("alfworld",),
            upstream="github.com/alfworld/alfworld release archives (0.2.2 json + pddl, 0.4.0 tw-pddl)",
            note="the same layout alfworld-download makes",
        ),
        DataSource(
            name="clindiag",
            title="ClinDiag cases packed into cases.jsonl, the paper's Common and Rare halves marked",
            licence="Apache-2.0",
            env_var="POS_CLINDIAG_DATA",
            environments=("clindiag",),
            upstream=f"github.com/{clindiag.PINNED.repository} @ {clindiag.PINNED.commit[:7]}, benchmark_dataset/",
            pinned=clindiag.PINNED,
            note="Common: the paper's 302 ids (shipped list); Rare: the same folder's rare0 .. "
            "rare301, ClinDiag's Rare Disease subset (302, as the paper's; it lists no ids)",
        ),
        DataSource(
            name="rca-nezha",
            title="Nezha's 101 incidents converted into the RCA100 case layout",
            licence="MIT",
            env_var="POS_RCA_DATA",
            environments=("rca-nezha", "rca"),
            upstream=f"github.com/{nezha.PINNED.repository} @ {nezha.PINNED.commit[:7]}, rca_data/",
            pinned=nezha.PINNED,
            note="stands in for the paper's RCA-100, which is not public",
        ),
        DataSource(
            name="loca",
            title="LOCA-Bench checkout (task configs, environments, MCP servers)",
            licence="MIT",
            env_var="POS_LOCA_ROOT",
            environments=("loca",),
            upstream=f"github.com/{loca.PINNED.repository} @ {loca.PINNED.commit[:7]}",
            pinned=loca.PINNED,
            note="plus LOCA's runtime (its own venv and npm servers), built after the checkout",
        ),
    )
}


def source(name: str) -> DataSource:
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(
            f"Unknown data set {name!r}; `pos data list` shows them: {', '.join(SOURCES)}."
        ) from None
