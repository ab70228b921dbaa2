//go:build !unix

package regfile

const nonblock = 0
