{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "i3C90Y5HsDE0BkzUDF4Ox1iVrgCV5heygaje4ytoqIaGza340wiReStKE3oUORhNzRiyaR68G+7yIvB6KcfqDQ=="
}
