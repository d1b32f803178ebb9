"""Datasets: the items an evaluator runs its agent on.

Load a file with :class:`JsonDataset`, :class:`JsonlDataset` or :class:`YamlDataset` (or
:func:`load_dataset`, which picks one by suffix), give items in Python with
:class:`ArrayDataset`, or subclass :class:`Dataset` for any other source.
"""

from agenteval.datasets._array import ArrayDataset
from agenteval.datasets._base import Dataset
from agenteval.datasets._json import JsonDataset, JsonlDataset
from agenteval.datasets._load import load_dataset
from agenteval.datasets._yaml import YamlDataset

__all__ = [
    "ArrayDataset",
    "Dataset",
    "JsonDataset",
    "JsonlDataset",
    "YamlDataset",
    "load_dataset",
]
