from __future__ import annotations

import subprocess
import sys

import agenteval.datasets


def test_datasets_all_is_sorted_and_documented() -> None:
    names = agenteval.datasets.__all__
    assert names == sorted(names)
    assert set(names) == {
        "ArrayDataset",
        "Dataset",
        "JsonDataset",
        "JsonlDataset",
        "YamlDataset",
        "load_dataset",
    }
    for name in names:
        assert getattr(agenteval.datasets, name).__doc__, name


def test_datasets_import_does_not_load_yaml() -> None:
    code = "import sys, agenteval.datasets; print('yaml' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
