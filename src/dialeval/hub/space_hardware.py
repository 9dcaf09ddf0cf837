"""What the Spaces run on: the torch build their ``requirements.txt`` pins (``dialeval hub build --torch``) and the
hardware ``upload.sh`` requests (``$DIALEVAL_SPACE_HARDWARE``), checked against each other before any upload.

- ``cpu`` (default): the CPU build this project tests, from PyTorch's CPU index (a 192 MB wheel, 754 MB
  installed), for the free ``cpu-basic``/``cpu-upgrade`` hardware. PyPI's default Linux torch (2.14.1) is a
  CUDA 13 build: with its 16 nvidia/cuda wheels 2.74 GB to download, a 6.5 GB venv, and it needs an R580+ driver;
  never pulled by accident.
- ``cu126``: a CUDA 12.6 build (drivers R525+, as the T4/L4/A10G/A100 hosts run) from PyTorch's cu126 index.
- ``image``: no torch line; ZeroGPU (``zero-a10g``) Spaces ship torch in their image, and the range
  ``torch>=2.4`` of ``dialeval[models]`` keeps it.

``python -m dialeval.hub.space_hardware FLAVOUR TORCH`` exits 2 with one line when the flavour is not a Space
hardware name or does not suit the build; ``upload.sh`` runs it first.
"""

from __future__ import annotations

import sys

TORCH_TESTED = "2.13.0"  #: the torch this project's suite runs (install.sh pins its CPU build)
TORCH_CU126 = "2.9.1"  #: the newest torch release with CUDA 12.6 wheels this pin was written for
#: build → (PyTorch wheel index, the requirement); ``image``: the Space image's torch.
TORCH_BUILDS: dict[str, tuple[str, str] | None] = {
    "cpu": ("https://download.pytorch.org/whl/cpu", f"torch=={TORCH_TESTED}+cpu"),
    "cu126": ("https://download.pytorch.org/whl/cu126", f"torch=={TORCH_CU126}+cu126"),
    "image": None,
}


def torch_lines(build: str) -> str:
    """The ``requirements.txt`` lines that choose torch for ``build`` (before dialeval's own line)."""
    check_build(build)
    pinned = TORCH_BUILDS[build]
    if pinned is None:
        return "# torch: the Space image's (ZeroGPU images ship it; dialeval[models] asks only torch>=2.4)\n"
    index, requirement = pinned
    return f"# torch: the {build} build, chosen with `dialeval hub build --torch {build}`\n" \
           f"--extra-index-url {index}\n{requirement}\n"


def check_build(build: str) -> str:
    if build not in TORCH_BUILDS:
        raise ValueError(f"--torch {build!r} is not a torch build; choose one of {sorted(TORCH_BUILDS)}.")
    return build


def flavours() -> list[str]:
    """The Space hardware names the Hub accepts (``huggingface_hub.SpaceHardware``)."""
    from huggingface_hub import SpaceHardware

    return [h.value for h in SpaceHardware]


def suits(flavour: str, build: str) -> bool:
    """Whether a Space built with torch ``build`` runs its models on ``flavour``'s hardware: CPU torch on CPU
    flavours, the image's torch on ZeroGPU, the cu126 build on the other GPU flavours."""
    if flavour.startswith("cpu"):
        return build == "cpu"
    if flavour.startswith("zero"):
        return build == "image"
    return build == "cu126"


def check_hardware(flavour: str, build: str) -> None:
    """One-line :class:`ValueError` when ``flavour`` is unknown or does not suit the torch ``build``."""
    check_build(build)
    known = flavours()
    if flavour not in known:
        raise ValueError(f"DIALEVAL_SPACE_HARDWARE={flavour!r} is not a Space hardware name; choose one of {known}.")
    if not suits(flavour, build):
        fit = next(b for b in TORCH_BUILDS if suits(flavour, b))
        raise ValueError(f"DIALEVAL_SPACE_HARDWARE={flavour!r} does not suit the Spaces' torch (built with --torch {build}); "
                         f"rebuild with `dialeval hub build --torch {fit} ...`, or choose a flavour for {build}.")


def main(argv: list[str] | None = None) -> int:
    flavour, build = (argv if argv is not None else sys.argv[1:])[:2]
    try:
        check_hardware(flavour, build)
    except ValueError as exc:
        print(f"upload.sh: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
