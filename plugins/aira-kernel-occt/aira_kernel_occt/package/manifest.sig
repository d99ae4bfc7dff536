{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "kySkOlpFbQWC3D2iyfJ2WBIoy4y8PHuMIZPEBlcG8jErZneJ1zizhcfNXRXq+w0/eWc64fdRCbw41r0syVSaCA=="
}
