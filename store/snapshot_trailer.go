package store

// AppendSnapshotTrailer finishes a bbolt file at path as a snapshot file
// etcd recognises: it pads the file with zeros to a multiple of 512
// bytes, appends the sha256 of its contents (the trailer `etcdutl
// snapshot restore` verifies), and fsyncs the file and its directory. It
// returns the hex sha256 and the final size. The file must be closed by
// every writer.
func AppendSnapshotTrailer(path string) (sha256Hex string, size int64, err error) {
	return appendTrailer(path)
}
