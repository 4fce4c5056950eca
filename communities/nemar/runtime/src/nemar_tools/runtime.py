"""The runtime's defaults: the fetch function and Zarr host the community prelude sets."""

from .datasets import ZARR_BASE, check_dataset_id, dataset_url
from .fetch import Fetcher

_fetch = None
_zarr_base = ZARR_BASE


def configure(*, fetch, zarr_base=ZARR_BASE):
    """Set the fetch function and Zarr host that read_index() and fetcher() use.

    The community's prelude calls this once per boot, with the runtime's own fetch (the
    only way out of the sandbox) and the deployment's Zarr host.
    """
    global _fetch, _zarr_base
    if not callable(fetch):
        raise TypeError("fetch must be callable")
    Fetcher(fetch, zarr_base)  # validates the base URL
    _fetch = fetch
    _zarr_base = zarr_base.rstrip("/")


def zarr_base():
    """Return the Zarr host configure() set (production's by default)."""
    return _zarr_base


async def ready():
    """Finish the prelude: raise RuntimeError unless configure() has run.

    It does no network I/O, so a boot never fails because the Zarr host is slow.
    """
    if _fetch is None:
        raise RuntimeError("nemar_tools.configure(fetch=...) has not been called")


def fetcher(dataset_id):
    """Return a Fetcher for the files of a dataset's Zarr store on the configured host."""
    if _fetch is None:
        raise RuntimeError("nemar_tools.configure(fetch=...) has not been called")
    return Fetcher(_fetch, dataset_url(dataset_id, _zarr_base))


async def read_index(dataset_id):
    """Return a dataset's index.json, parsed: the list of its recordings and their stores."""
    check_dataset_id(dataset_id)
    return await fetcher(dataset_id).json("index.json")


__all__ = ["configure", "fetcher", "read_index", "ready", "zarr_base"]
