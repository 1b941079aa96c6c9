//! Boxes on a 30° slope: with μ = 0.7 > tan 30° one sticks, with μ = 0.5 the other slides with
//! a = g (sin θ − μ cos θ) = 2.657 m/s². Prints their positions along the slope.
//!
//! `cargo run --release --example incline`

mod common;

use bevy_canal::prelude::*;

fn main() {
    let mut app = common::app();
    let rotation = Quat::from_rotation_z(30f32.to_radians());
    let up = rotation * Vec3::Y;
    let down = rotation * Vec3::NEG_X;
    let mut boxes = Vec::new();
    for (z, mu) in [(-2.0, 0.7), (2.0, 0.5)] {
        app.world_mut().spawn((
            RigidBody::Static,
            Collider::cuboid(200.0, 1.0, 3.0),
            Friction::new(mu),
            Transform::from_translation(up * -0.5 + Vec3::Z * z).with_rotation(rotation),
        ));
        let start = up * 0.5 + Vec3::Z * z;
        let entity = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(1.0, 1.0, 1.0),
                Friction::new(mu),
                Transform::from_translation(start).with_rotation(rotation),
            ))
            .id();
        boxes.push((entity, start, mu));
    }
    common::run(&mut app, 5, move |app| {
        boxes
            .iter()
            .map(|(entity, start, mu)| {
                let s = (app.world().get::<Transform>(*entity).unwrap().translation - *start).dot(down);
                format!("μ={mu}: {s:.6} m")
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
}
