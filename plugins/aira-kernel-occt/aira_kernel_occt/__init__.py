"""Aira's OpenCASCADE kernel (via CadQuery) and its signed capability package.

Importing this package is cheap: CadQuery is imported only in the kernel's worker process.
"""
