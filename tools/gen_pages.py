"""mkdocs-gen-files script: the pages built from the repository at site-build time (nothing here is copied
into ``docs/``). Metric pages are the metric cards, dataset pages the Hub dataset cards, the changelog is
``CHANGELOG.md``; the CLI reference comes from the argparse parser, the leaderboard and benchmark pages from
the committed result files under ``docs/results/``."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sitegen  # noqa: E402

for name in sitegen.metric_names():
    card = sitegen.METRICS / name / "README.md"
    with mkdocs_gen_files.open(f"metrics/{name}.md", "w") as f:
        f.write(sitegen.site_links(sitegen.card_body(card)))
    mkdocs_gen_files.set_edit_path(f"metrics/{name}.md", f"../metrics/{name}/README.md")

for name in sitegen.dataset_names():
    with mkdocs_gen_files.open(f"datasets/{name}.md", "w") as f:
        f.write(sitegen.card_body(sitegen.DATASET_CARDS / name / "README.md"))

with mkdocs_gen_files.open("cli.md", "w") as f:
    f.write(sitegen.cli_reference())

report, meta = sitegen.leaderboard()
with mkdocs_gen_files.open("leaderboard.md", "w") as f:
    f.write(sitegen.leaderboard_page(report, meta))
svg = sitegen.heatmap_svg(report)
if svg:
    with mkdocs_gen_files.open("leaderboard-heatmap.svg", "w") as f:
        f.write(svg)

with mkdocs_gen_files.open("benchmarks.md", "w") as f:
    f.write(sitegen.benchmarks_page(sitegen.benchmark_results()))

with mkdocs_gen_files.open("changelog.md", "w") as f:
    f.write((sitegen.REPO / "CHANGELOG.md").read_text(encoding="utf-8"))

