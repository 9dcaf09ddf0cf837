"""WordNet 3.0 for METEOR's synonym stage, found offline.

nltk's METEOR matches synonyms through WordNet. nltk's own copy (``nltk.download("wordnet")``) is used when it is
installed; otherwise Debian's ``wordnet-base`` package (``apt-get install wordnet-base``: the same WordNet 3.0
database files under ``/usr/share/wordnet``) is read through nltk's reader. Debian ships every file nltk reads but
``lexnames``, the fixed list of WordNet's 45 lexicographer files (``man 5 lexnames``), so a folder under the
dialeval cache links the database files and adds that list.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from dialeval.io.files import atomic_write_text
from dialeval.models.runtime import cache_dir

DEBIAN_WORDNET = Path("/usr/share/wordnet")
#: WordNet 3.0's lexicographer files, in file-number order, with their syntactic category (1 noun, 2 verb,
#: 3 adjective, 4 adverb), as lexnames(5WN) lists them.
LEXNAMES = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1), ("noun.animal", 1),
    ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1), ("noun.cognition", 1), ("noun.communication", 1),
    ("noun.event", 1), ("noun.feeling", 1), ("noun.food", 1), ("noun.group", 1), ("noun.location", 1),
    ("noun.motive", 1), ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1),
    ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1), ("noun.shape", 1),
    ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1), ("verb.body", 2), ("verb.change", 2),
    ("verb.cognition", 2), ("verb.communication", 2), ("verb.competition", 2), ("verb.consumption", 2),
    ("verb.contact", 2), ("verb.creation", 2), ("verb.emotion", 2), ("verb.motion", 2), ("verb.perception", 2),
    ("verb.possession", 2), ("verb.social", 2), ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
)
DATABASE_FILES = tuple(f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")) + (
    "noun.exc", "verb.exc", "adj.exc", "adv.exc")
INSTALL_HINT = ("METEOR needs WordNet 3.0: `apt-get install wordnet-base` (Debian/Ubuntu; `bash install.sh` does it), "
                "or `python -m nltk.downloader wordnet`.")


def debian_wordnet_folder(source: Path = DEBIAN_WORDNET, cache: Path | None = None) -> Path:
    """A folder nltk's WordNet reader can open, built from Debian's database files: links to them plus
    ``lexnames``. Made once per cache; a folder whose links point elsewhere is rebuilt."""
    missing = [name for name in DATABASE_FILES if not (source / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{source} lacks {missing[0]}. {INSTALL_HINT}")
    folder = (cache or cache_dir()) / "wordnet-3.0"
    folder.mkdir(parents=True, exist_ok=True)
    for name in DATABASE_FILES:
        link = folder / name
        if not (link.is_symlink() and Path(os.readlink(link)) == source / name):
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(source / name)
    text = "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(LEXNAMES))
    lexnames = folder / "lexnames"
    if not lexnames.is_file() or lexnames.read_text(encoding="utf-8") != text:
        atomic_write_text(lexnames, text)
    return folder


@lru_cache(maxsize=1)
def load_wordnet() -> Any:
    """nltk's WordNet corpus reader over WordNet 3.0 (nltk's data, else Debian's files); a clear error with the
    install command when neither is there."""
    import warnings

    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    try:
        root: Any = nltk.data.find("corpora/wordnet")
    except LookupError:
        root = str(debian_wordnet_folder())
    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # no Open Multilingual Wordnet mapping: METEOR reads English synsets only

    with warnings.catch_warnings():  # "multilingual functions are not available": METEOR uses English only
        warnings.simplefilter("ignore", UserWarning)
        reader = EnglishWordNet(root, None)
    if reader.get_version() != "3.0":
        raise RuntimeError(f"METEOR expects WordNet 3.0, found {reader.get_version()} at {root}. {INSTALL_HINT}")
    return reader
