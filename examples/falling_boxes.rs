//! A hundred boxes dropped in a heap onto the ground: many islands merging into one pile.
//!
//! `cargo run --release --example falling_boxes`

mod common;

use bevy_canal::prelude::*;

fn main() {
    let mut app = common::app();
    common::ground(&mut app, 40.0);
    // 1.8 m apart: more than a unit cube's diagonal (1.73 m), so no two start overlapped
    // whatever their rotations.
    for i in 0..100 {
        let (x, z, y) = (
            (i % 5) as f32 * 1.8 - 3.6,
            ((i / 5) % 5) as f32 * 1.8 - 3.6,
            2.0 + (i / 25) as f32 * 1.8,
        );
        app.world_mut().spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(x, y, z).with_rotation(Quat::from_euler(
                bevy_math::EulerRot::XYZ,
                0.3 * i as f32,
                0.7 * i as f32,
                0.0,
            )),
        ));
    }
    common::run(&mut app, 10, |app| {
        let contacts = app.world().resource::<Contacts>();
        let ground_load: f32 = contacts.pairs.iter().map(|p| p.total_impulse().y.abs()).sum::<f32>();
        format!(
            "{} touching pairs, Σ|impulse_y| {ground_load:.2} N·s",
            contacts.pairs.len()
        )
    });
}
