"""The recipe: the source and dataset documents, their JSON Schemas and the registration rules.

Pure core: values in, a registered model or coded refusals out. No sockets, files, clocks or
sleeps (schemas are package data, read by `resources`).
"""
