"""dialeval's built-in metrics: one folder each, holding the declaration (``__init__.py``), the
``evaluate`` script (``<name>.py``) and the card (``README.md``). See :mod:`dialeval.registry`."""
