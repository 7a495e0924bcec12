package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/etcdpvc/etcdpvc/codec"
	"github.com/etcdpvc/etcdpvc/flows"
	"github.com/etcdpvc/etcdpvc/internal/cliargs"
)

// decodeOptions are the flags of `etcdpvc decode`.
type decodeOptions struct {
	Input string
	Key   string
	Print printOptions
}

func decodeCommand() command {
	return command{
		name:      "decode",
		usage:     "decode a stored value to YAML or JSON",
		argsUsage: "[FILE|-]",
		desc: "decode reads one value as kube-apiserver stores it in etcd (protobuf envelope, JSON,\n" +
			"or encrypted with --encryption-config) and prints the object. It accepts the raw bytes,\n" +
			"`etcdctl get KEY --print-value-only` output (its trailing newline is tolerated, after an\n" +
			"encrypted value too: dropped when the value decrypts only without it) and\n" +
			"`etcdctl get KEY -w json` output (base64 value and key). It is plumbing: it prints every\n" +
			"field stored, metadata.managedFields included, so that `decode | encode` gives the stored\n" +
			"bytes back. Secret values are redacted unless --show-secrets is given.",
		examples: `etcdctl get /registry/persistentvolumeclaims/demo/www-web-0 --print-value-only | etcdpvc decode
etcdctl get /registry/pods/demo/web-0 -w json | etcdpvc decode -o json
etcdpvc decode value.bin --etcd-key /registry/secrets/demo/s --encryption-config enc.yaml`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "yaml", Usage: "yaml or json"},
			&cli.StringFlag{Name: "etcd-key", Usage: "the etcd key the value was stored under (needed to decrypt)"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "print Secret values instead of their sizes"},
			&cli.BoolFlag{Name: "hide-managed-fields", Usage: "leave out metadata.managedFields (kept by default, so that decode | encode gives the stored bytes back)"},
			&cli.BoolFlag{Name: "show-managed-fields", Usage: "print metadata.managedFields: decode's default, accepted as get accepts it"},
		},
		args: cliargs.Optional("input file", cliargs.OfferNothing),
		action: func(c *cli.Context, e *env, in *input) error {
			o := decodeOptions{Input: c.Args().First(), Key: c.String("etcd-key"),
				Print: printOptions{Output: c.String("output"), ShowSecrets: c.Bool("show-secrets"), HideManagedFields: c.Bool("hide-managed-fields")}}
			if err := cliargs.CheckOutput(o.Print.Output, "yaml", "json"); err != nil {
				return err
			}
			if c.Bool("hide-managed-fields") && c.Bool("show-managed-fields") {
				return usagef("give --hide-managed-fields or --show-managed-fields, not both")
			}
			return runDecode(e, in.g, o)
		},
	}
}

func runDecode(e *env, g *globalOptions, o decodeOptions) error {
	r, err := openInput(e, o.Input)
	if err != nil {
		return err
	}
	defer r.Close()
	content, err := flows.DecodeInput(e, r, o.Key, func(key string, value []byte) ([]byte, error) { return decryptValue(e, g, key, value) })
	if err != nil {
		return err
	}
	return printObject(e.stdout, content, o.Print)
}

// encodeOptions are the flags of `etcdpvc encode`.
type encodeOptions struct {
	Input string
	Key   string
}

func encodeCommand() command {
	return command{
		name:      "encode",
		data:      true,
		usage:     "turn a YAML or JSON manifest into the bytes the apiserver stores",
		argsUsage: "[FILE|-]",
		desc: "encode writes the exact bytes kube-apiserver would store for an object: the protobuf\n" +
			"envelope for built-in kinds, JSON with its trailing newline for custom resources, CRDs\n" +
			"and APIServices. resourceVersion and selfLink are never stored. With --etcd-key and\n" +
			"--encryption-config the value is encrypted with the resource's first provider. The\n" +
			"output is usable as `etcdctl put KEY < file`.",
		examples: `etcdpvc decode pvc.bin -o json | etcdpvc encode > pvc.bin.new
etcdpvc encode pvc.yaml | etcdctl put /registry/persistentvolumeclaims/demo/www-web-0`,
		flags: []cli.Flag{
			&cli.StringFlag{Name: "etcd-key", Usage: "the etcd key the value is for (needed to encrypt)"},
		},
		args: cliargs.Optional("input file", cliargs.OfferNothing),
		action: func(c *cli.Context, e *env, in *input) error {
			o := encodeOptions{Input: c.Args().First(), Key: c.String("etcd-key")}
			return runEncode(e, in.g, o)
		},
	}
}

func runEncode(e *env, g *globalOptions, o encodeOptions) error {
	r, err := openInput(e, o.Input)
	if err != nil {
		return err
	}
	defer r.Close()
	manifest, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	if len(manifest) == 0 {
		return fmt.Errorf("encode: %w", codec.ErrEmpty)
	}
	value, err := codec.EncodeManifest(manifest)
	if err != nil {
		return err
	}
	value, err = encryptValue(e, g, o.Key, value)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(value)
	return err
}
