{
  "format": "aira.signature/1",
  "algorithm": "ed25519",
  "context": "aira.capability-package.v1",
  "publisher": "aira-first-party",
  "keyId": "e81c20c98175665f",
  "signature": "ydf6Va2EhoUGnw22BDVUMpPlj9bC7eK4vxplMMpxe08uUidDONtMFXdgA70ZDRXUeNIW5AdFpdWFcvBSHiOfCg=="
}
