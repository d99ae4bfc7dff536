{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "pm1iKLjbRwZUJmOxaHHxdNfoP29s0mGCdXuIwLZtsqxQ1GTtd4dfwUXZqSCh6DntVT4twXtUj97X9agbck2EDQ=="
}
