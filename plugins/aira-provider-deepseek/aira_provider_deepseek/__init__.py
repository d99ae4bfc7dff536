"""Aira's DeepSeek provider plugin (entry point ``deepseek``): see README.md."""
