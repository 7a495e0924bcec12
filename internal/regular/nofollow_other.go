//go:build !unix

package regular

// oNoFollow is 0 where the platform has no O_NOFOLLOW.
const oNoFollow = 0
