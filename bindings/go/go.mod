module github.com/cosid-rs/cosid/bindings/go

go 1.24
