"""`pos data`: the benchmarks' data, fetched at pinned versions, checked and prepared.

Each data set (`SOURCES`) comes from a pinned upstream (a repository at one commit, or release
archives), is checked against it (git ids, archive checksums and CRCs), and is prepared into
`$POS_DATA/<name>` (default: the user's cache) through a temporary folder, with a manifest of
every file written last: a folder without its manifest is never taken as ready. The converters
(`clindiag`, `nezha`) are this project's own.

The environments look for their data in this order: a path given explicitly (option or suite
config), their environment variable, then the ready `pos data` folder (`prepared`); when none
is there, `how_to_get` says how to get it.
"""

from pos_agent.data.errors import DataError
from pos_agent.data.home import DATA_ENV_VAR, data_home, dataset_dir
from pos_agent.data.prepare import DataStatus, get, how_to_get, prepared, status
from pos_agent.data.sources import SOURCES, DataSource, source

__all__ = [
    "DATA_ENV_VAR",
    "SOURCES",
    "DataError",
    "DataSource",
    "DataStatus",
    "data_home",
    "dataset_dir",
    "get",
    "how_to_get",
    "prepared",
    "source",
    "status",
]
