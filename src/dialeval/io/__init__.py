"""Inputs and outputs: file readers with errors that name the file and line (:mod:`~dialeval.io.readers`),
atomic writers and output-path checks (:mod:`~dialeval.io.files`), input validation
(:mod:`~dialeval.io.validation`), text normalisation (:mod:`~dialeval.io.text`) and score signatures
(:mod:`~dialeval.io.signature`).

It is the bottom of the house: it imports nothing else of dialeval.
"""
