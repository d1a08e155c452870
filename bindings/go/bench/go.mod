// The benchmark of the Go binding beside the Go Snowflake generators people move from. A module of its own, so
// that the library's module (the folder above) has no dependencies.
module github.com/cosid-rs/cosid/bindings/go/bench

go 1.24

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/cosid-rs/cosid/bindings/go v0.0.0
	github.com/sony/sonyflake v1.2.0
)

replace github.com/cosid-rs/cosid/bindings/go => ../
