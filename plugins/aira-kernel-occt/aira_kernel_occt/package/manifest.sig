{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "4flbTUm5bGLWWTPQWC6go2OVsVx1kD64SCt/pZOZgC6tCg1j/NRAu5IPAVfyG5G5J9r7xh5k4suL5+krhykVBA=="
}
