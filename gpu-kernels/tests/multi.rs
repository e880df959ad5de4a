//! The multi-device layer: `--devices` parsing, one thread per device, failures named by
//! device and never waited on, and the contiguous splits every partitioned engine uses.

use gpu_kernels::multi::{
    split_even, split_weighted, DeviceSpec, DeviceSpecError, Devices, OnDevice,
};
use gpu_kernels::prelude::*;
use gpu_kernels::{kernel, GpuError, LaunchConfig};
use proptest::prelude::*;
use std::time::Duration;

kernel! {
    /// Thread i writes `x[i] * k` into `y[i]` for i < n.
    fn scale(k: u32, x: *const u32, y: *mut u32, n: u32) {
        let i = global_id_x();
        if i < n {
            store(y, i as usize, load(x, i as usize) * k);
        }
    }
}

#[test]
fn device_specs_parse_all_and_lists_and_refuse_the_rest() {
    assert_eq!("all".parse(), Ok(DeviceSpec::All));
    assert_eq!(" ALL ".parse(), Ok(DeviceSpec::All));
    assert_eq!("0".parse(), Ok(DeviceSpec::Ordinals(vec![0])));
    assert_eq!("2, 0,1".parse(), Ok(DeviceSpec::Ordinals(vec![2, 0, 1])));
    assert_eq!("".parse::<DeviceSpec>(), Err(DeviceSpecError::Empty));
    assert_eq!(
        "0,x".parse::<DeviceSpec>(),
        Err(DeviceSpecError::NotAnOrdinal("x".into()))
    );
    assert_eq!(
        "0,,1".parse::<DeviceSpec>(),
        Err(DeviceSpecError::NotAnOrdinal("".into()))
    );
    assert_eq!(
        "-1".parse::<DeviceSpec>(),
        Err(DeviceSpecError::NotAnOrdinal("-1".into()))
    );
    assert_eq!(
        "1,1".parse::<DeviceSpec>(),
        Err(DeviceSpecError::Repeated(1))
    );
    for s in ["all", "0", "3,1"] {
        assert_eq!(s.parse::<DeviceSpec>().unwrap().to_string(), s);
    }
}

#[test]
fn a_spec_names_ordinals_only_of_devices_present() {
    assert_eq!(DeviceSpec::All.ordinals(4).unwrap(), vec![0, 1, 2, 3]);
    assert!(matches!(
        DeviceSpec::All.ordinals(0),
        Err(GpuError::EmptyDeviceSet)
    ));
    let two = DeviceSpec::Ordinals(vec![1, 0]);
    assert_eq!(two.ordinals(2).unwrap(), vec![1, 0]);
    assert!(matches!(
        two.ordinals(1),
        Err(GpuError::NoDevice {
            ordinal: 1,
            count: 1
        })
    ));
    assert!(matches!(
        Devices::emulated(0),
        Err(GpuError::EmptyDeviceSet)
    ));
    assert!(matches!(
        Devices::gpus(&[], ""),
        Err(GpuError::EmptyDeviceSet)
    ));
}

#[test]
fn without_a_gpu_opening_gpus_is_an_error_not_an_empty_set() {
    // An empty PTX module can never be loaded: an error on any machine.
    assert!(Devices::all("").is_err());
    assert!(Devices::open(&DeviceSpec::Ordinals(vec![0]), "").is_err());
}

#[test]
fn every_emulated_device_runs_its_own_part_of_a_kernel_at_once() {
    let devs = Devices::emulated(3).unwrap();
    assert_eq!(devs.len(), 3);
    assert_eq!(devs.ordinals(), &[0, 1, 2]);
    assert_eq!(devs.name(), "3 x host SIMT emulator");
    let xs: Vec<u32> = (0..100).collect();
    let parts = split_even(xs.len(), devs.len());
    let outs = devs
        .par_map(|i, dev| -> Result<Vec<u32>, GpuError> {
            let x = &xs[parts[i].clone()];
            let xb = dev.upload(x)?;
            let mut yb = dev.alloc::<u32>(x.len())?;
            scale::launch(
                dev,
                LaunchConfig::linear(x.len() as u32, 32),
                3,
                &xb,
                &mut yb,
                x.len() as u32,
            )?;
            dev.read(&yb)
        })
        .unwrap();
    let got: Vec<u32> = outs.concat();
    assert_eq!(got, xs.iter().map(|x| x * 3).collect::<Vec<_>>());
    // Each device holds its own buffers only.
    assert!(devs.iter().all(|d| d.allocated_bytes() == 0));
}

#[test]
fn a_failing_device_is_named_and_does_not_hold_the_others() {
    let devs = Devices::emulated(4).unwrap();
    let e = devs
        .par_map(|i, _| {
            if i == 2 {
                Err("out of memory")
            } else {
                // The others are still working when device 2 fails.
                std::thread::sleep(Duration::from_millis(20));
                Ok(i)
            }
        })
        .unwrap_err();
    assert_eq!(e.ordinal(), 2);
    assert_eq!(e.to_string(), "device 2: out of memory");
    // The first failure in set order is reported when several fail.
    let e = devs
        .par_map(|i, _| if i >= 1 { Err(i) } else { Ok(()) })
        .unwrap_err();
    assert!(matches!(
        e,
        OnDevice::Failed {
            ordinal: 1,
            error: 1
        }
    ));
}

#[test]
fn a_panicking_device_thread_is_an_error_with_its_message() {
    for n in [1, 3] {
        let devs = Devices::emulated(n).unwrap();
        let e = devs
            .par_map(|i, _| -> Result<(), GpuError> {
                if i == n - 1 {
                    panic!("lost device {i}");
                }
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.ordinal(), n - 1);
        assert!(
            e.to_string().contains(&format!("lost device {}", n - 1)),
            "{e}"
        );
    }
}

#[test]
fn parts_are_driven_mutably_one_per_device() {
    let devs = Devices::emulated(2).unwrap();
    let mut counters = vec![10u32, 20];
    for _ in 0..3 {
        devs.par_each(&mut counters, |c| {
            *c += 1;
            Ok::<_, GpuError>(())
        })
        .unwrap();
    }
    assert_eq!(counters, [13, 23]);
    let e = devs
        .par_each(&mut counters, |c| if *c > 20 { Err(*c) } else { Ok(()) })
        .unwrap_err();
    assert!(matches!(
        e,
        OnDevice::Failed {
            ordinal: 1,
            error: 23
        }
    ));
}

proptest! {
    /// Splits cover every item once, in order, in exactly `parts` ranges; the heaviest
    /// part is at most one item heavier than an equal share (rounded up).
    #[test]
    fn weighted_splits_cover_in_order_and_balance(
        weights in proptest::collection::vec(0u64..1000, 0..60),
        parts in 1usize..9,
    ) {
        let split = split_weighted(&weights, parts);
        prop_assert_eq!(split.len(), parts);
        let mut next = 0;
        for r in &split {
            prop_assert_eq!(r.start, next);
            prop_assert!(r.end >= r.start);
            next = r.end;
        }
        prop_assert_eq!(next, weights.len());
        let total: u64 = weights.iter().sum();
        let max_item = weights.iter().copied().max().unwrap_or(0);
        for r in &split {
            let w: u64 = weights[r.clone()].iter().sum();
            prop_assert!(w <= total.div_ceil(parts as u64) + max_item, "{:?}: {}", r, w);
        }
    }

    #[test]
    fn even_splits_differ_by_at_most_one(n in 0usize..1000, parts in 1usize..9) {
        let split = split_even(n, parts);
        prop_assert_eq!(split.len(), parts);
        prop_assert_eq!(split[0].start, 0);
        prop_assert_eq!(split[parts - 1].end, n);
        for w in split.windows(2) {
            prop_assert_eq!(w[0].end, w[1].start);
        }
        let lens: Vec<usize> = split.iter().map(|r| r.len()).collect();
        prop_assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1);
    }
}
