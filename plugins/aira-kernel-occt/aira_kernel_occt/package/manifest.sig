{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "qPiHrrvyrtUJh866GNrvo2q8J/zj5k7kjkmZzaYKfUSiwtrmu63Q+hQ3YNh3mRnUrG2dT1zj6Z7rZWetEJX9Bw=="
}
