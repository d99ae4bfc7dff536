{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "Dkac+Daqaz3Nd1dJjTgKQy4JgqQxkdLVhGb7d9tu56fnPYJ8vlSZ2MqML5IEWxt98TOXb3dX/kzXevG5mooTBA=="
}
