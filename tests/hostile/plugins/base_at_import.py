"""HOSTILE: raises a BaseException subclass (not an Exception) while it is imported."""


class Hostile(BaseException):
    pass


raise Hostile("raised at import, past every `except Exception`")
