"""``evaluate`` module classes; the scripts under ``metrics/<name>/`` subclass these and add nothing.

Each script imports this package as a module (``import dialeval.modules.lexical as impl``) rather than
importing the class itself, because ``evaluate`` takes the first module class it finds in the script.
"""
