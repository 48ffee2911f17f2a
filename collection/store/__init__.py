"""The state directory: generations written to a temporary directory, fsynced and switched
atomically, the run lock and recovery after a kill.

Shell: files, directories, fsync and locks.
"""
