"""Batch runs: a file of prompts through the chat's engine, its results kept and exported. No Qt, no vLLM.

``prompt_file`` reads a file as a stream of lines, ``formats`` turns lines into prompts (or problems
naming their line), ``results`` holds the rows column by column, ``run`` keeps a bounded number of
them in the engine, ``export`` writes what the engine reported.
"""
