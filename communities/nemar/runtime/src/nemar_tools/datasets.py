"""NEMAR dataset IDs and the URLs built from them."""

import re

#: The form of a NEMAR dataset ID: a two-letter prefix and six digits, such as "ds004504".
DATASET_PATTERN = r"^(nm|ds|on|xx)[0-9]{6}$"

#: Where NEMAR serves datasets as Zarr stores (the production host).
ZARR_BASE = "https://zarr.nemar.org"

# fullmatch without the anchors: "$" would also accept a trailing newline.
_DATASET_RE = re.compile(r"(nm|ds|on|xx)[0-9]{6}")


def check_dataset_id(dataset_id):
    """Return dataset_id unchanged if it is a NEMAR dataset ID, else raise ValueError."""
    if not isinstance(dataset_id, str) or _DATASET_RE.fullmatch(dataset_id) is None:
        raise ValueError(
            f"{dataset_id!r} is not a NEMAR dataset ID: expected nm, ds, on or xx "
            "followed by six digits, such as 'ds004504'"
        )
    return dataset_id


def _base(base):
    return base.rstrip("/")


def dataset_url(dataset_id, base=ZARR_BASE):
    """Return the URL of a dataset's Zarr store, ending in "/".

    >>> dataset_url("ds004504")
    'https://zarr.nemar.org/ds004504/zarr/'
    """
    return f"{_base(base)}/{check_dataset_id(dataset_id)}/zarr/"


def index_url(dataset_id, base=ZARR_BASE):
    """Return the URL of a dataset's index.json, which lists its recordings.

    >>> index_url("ds004504", base="https://zarr-test.nemar.org/")
    'https://zarr-test.nemar.org/ds004504/zarr/index.json'
    """
    return dataset_url(dataset_id, base) + "index.json"

