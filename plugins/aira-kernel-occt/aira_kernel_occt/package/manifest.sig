{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "N3m1mtOnH1M9hwK4za6VRZ/W2eUXrMPt4gBCDsdGCBtG+TinszjjSVhnWl1WB3GfNdnuHpBnXRzAE6dsmJHqCA=="
}
