"""Small helpers for exploring NEMAR datasets in the assistant's browser Python runtime.

Pure Python, standard library only, so it installs anywhere Pyodide runs:

- ``describe(values)``: summary statistics of numbers (nested sequences and numpy arrays
  are flattened), without needing numpy.
- ``dataset_url(dataset_id)``, ``index_url(dataset_id)``: URLs of a dataset's Zarr store
  and of its index, after checking the ID (``check_dataset_id``).
- ``Fetcher``: reads files under one base URL through a fetch function (such as the
  runtime's own), refusing paths that would leave that base.
- ``configure(fetch=..., zarr_base=...)`` and ``await ready()``: what the community's
  prelude calls once per boot; then ``await read_index(dataset_id)`` returns a dataset's
  parsed index.json and ``fetcher(dataset_id)`` a Fetcher for its Zarr store.
"""

from .datasets import (
    DATASET_PATTERN,
    ZARR_BASE,
    check_dataset_id,
    dataset_url,
    index_url,
)
from .fetch import Fetcher
from .runtime import configure, fetcher, read_index, ready, zarr_base
from .stats import Summary, describe

__version__ = "0.1.0"

__all__ = [
    "DATASET_PATTERN",
    "ZARR_BASE",
    "Fetcher",
    "Summary",
    "check_dataset_id",
    "configure",
    "dataset_url",
    "describe",
    "fetcher",
    "index_url",
    "read_index",
    "ready",
    "zarr_base",
]
