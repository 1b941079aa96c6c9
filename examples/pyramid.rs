//! A 20-row pyramid of 210 boxes standing on the ground: exact contact keeps it standing, no
//! sinking, no creep. Prints per simulated second the solver statistics and how far the top box
//! has moved.
//!
//! `cargo run --release --example pyramid`

mod common;

use bevy_canal::prelude::*;

fn main() {
    let mut app = common::app();
    common::ground(&mut app, 60.0);
    let rows = 20;
    let mut top = None;
    for row in 0..rows {
        for j in 0..rows - row {
            let x = j as f32 * 1.05 - (rows - row - 1) as f32 * 0.525;
            let entity = app
                .world_mut()
                .spawn((
                    RigidBody::Dynamic,
                    Collider::cuboid(1.0, 1.0, 1.0),
                    Transform::from_xyz(x, 0.5 + row as f32, 0.0),
                ))
                .id();
            top = Some((entity, Vec3::new(x, 0.5 + row as f32, 0.0)));
        }
    }
    let (top, start) = top.expect("at least one row");
    common::run(&mut app, 10, |app| {
        let moved = (app.world().get::<Transform>(top).unwrap().translation - start).length();
        format!("top box moved {moved:.2e} m")
    });
}
