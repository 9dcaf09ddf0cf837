"""What the Hub shows of each metric (issue 34.7): the cards use evaluate's headings and the module info
names the metric as its folder and Hub repo do, with its license, homepage and code."""

from __future__ import annotations

import re

import pytest

import dialeval
from dialeval import registry

#: The headings of evaluate's metric card template that every dialeval card has.
HEADINGS = {"Metric Description", "How to Use", "Inputs", "Output Values", "Examples", "Limitations and Bias",
            "Citation"}


@pytest.mark.parametrize("name", list(registry.declarations()))
def test_cards_use_evaluates_headings(name):
    headings = set(re.findall(r"^## (.+?)\s*$", registry.get(name).card(), re.M))
    assert HEADINGS <= headings, sorted(HEADINGS - headings)
    assert "Description" not in headings  # evaluate's name is "Metric Description"


@pytest.mark.parametrize("name", ["dialspk", "dialgen", "distinct_n", "full_followup"])
def test_module_info_names_the_repo_license_homepage_and_code(name):
    decl = registry.get(name)
    module = dialeval.load(name, decl.ui_config) if decl.ui_config else dialeval.load(name)
    assert module.name == name and module.info.module_name == name  # was dial_spk / dial_gen
    assert module.info.license == "MIT"
    assert module.info.homepage == decl.urls[0]
    assert module.info.codebase_urls and all(u.startswith("https://") for u in module.info.codebase_urls)
    if name == "full_followup":
        assert module.info.codebase_urls == ["https://github.com/maximedb/full"]  # the reference implementation
