package sioclient

// ErrClosed is what a client closed by its owner ends with, for the
// external tests.
var ErrClosed = errClosed
