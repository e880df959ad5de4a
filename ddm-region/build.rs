fn main() {
    gpu_kernels::build::compile_kernels("kernels");
}
