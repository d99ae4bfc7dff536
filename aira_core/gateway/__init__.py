"""The provider gateway (docs/gateway.md): the decision source that sends each step to a
model provider and records every billable submission in the attempt ledger first.

- :mod:`aira_core.gateway.gateway`: :class:`~aira_core.gateway.gateway.Gateway`, routes,
  failover, pauses, resume, the job path and cancel;
- :mod:`aira_core.gateway.source`: the gateway as a run's decision source, from what a user
  names (``aira run --provider … --model …``);
- :mod:`aira_core.gateway.ledger` and :mod:`aira_core.gateway.facts`: the Task/Attempt
  ledger (spec 002) and its six fact axes;
- :mod:`aira_core.gateway.bench`: ``aira bench providers``;
- the pieces a provider plugin is built from, all public: :mod:`~aira_core.gateway.http`
  (the one HTTP call and what a failure proves), :mod:`~aira_core.gateway.chat` (the chat
  wire), :mod:`~aira_core.gateway.transports` (``tool``, ``json``, ``strict``) with
  :mod:`~aira_core.gateway.brackets` (the bracket repair),
  :mod:`~aira_core.gateway.openai_compat` (an OpenAI-compatible provider) and
  :mod:`~aira_core.gateway.config` (``providers.toml``).

Nothing is imported here: ``aira --help`` and plugin discovery must not pay for httpx2.
"""
