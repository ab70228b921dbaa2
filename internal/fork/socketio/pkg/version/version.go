package version

const VERSION = "v3.0.2"
