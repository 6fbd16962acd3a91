module orioninterop

go 1.19
