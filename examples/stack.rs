//! A tower of ten boxes: each contact carries the weight above it exactly, so the top box stays
//! at its height to a micrometre.
//!
//! `cargo run --release --example stack`

mod common;

use bevy_canal::prelude::*;

fn main() {
    let mut app = common::app();
    common::ground(&mut app, 10.0);
    let boxes: Vec<_> = (0..10)
        .map(|i| {
            app.world_mut()
                .spawn((
                    RigidBody::Dynamic,
                    Collider::cuboid(1.0, 1.0, 1.0),
                    Transform::from_xyz(0.0, 0.5 + i as f32, 0.0),
                ))
                .id()
        })
        .collect();
    let top = boxes[9];
    common::run(&mut app, 10, |app| {
        let y = app.world().get::<Transform>(top).unwrap().translation.y;
        format!("top at {y:.7} m (exact 9.5)")
    });
}
