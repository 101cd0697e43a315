"""A URDF's `<ros2_control>` block for ros2_control's mock hardware
(mock_components/GenericSystem): each joint commanded by position, its position and velocity
read back (GenericSystem reports each update the command of the update before, and the
velocity between them), starting at the given configuration. On a real robot the vendor's description
carries its own block; this one stands in for it on a desk."""

from xml.sax.saxutils import quoteattr


def mock_hardware_block(joints: list[str], initial: list[float], name: str = 'LOInKMockHardware') -> str:
    """The `<ros2_control>` element, as text."""
    if len(joints) != len(initial):
        raise ValueError(f'{len(initial)} initial positions for {len(joints)} joints')
    lines = [f'<ros2_control name={quoteattr(name)} type="system">',
             '  <hardware><plugin>mock_components/GenericSystem</plugin>',
             # Velocities from the position commands, as a robot measures them: a trajectory
             # controller starts each new trajectory from the state's velocity.
             '    <param name="calculate_dynamics">true</param></hardware>']
    for joint, value in zip(joints, initial):
        lines += [f'  <joint name={quoteattr(joint)}>',
                  '    <command_interface name="position"/>',
                  f'    <state_interface name="position"><param name="initial_value">{value!r}'
                  '</param></state_interface>',
                  '    <state_interface name="velocity"/>',
                  '  </joint>']
    return '\n'.join(lines + ['</ros2_control>'])


def with_mock_hardware(urdf: str, joints: list[str], initial: list[float]) -> str:
    """The URDF text with the block added before `</robot>`."""
    end = urdf.rfind('</robot>')
    if end < 0:
        raise ValueError('the URDF has no </robot>')
    return urdf[:end] + mock_hardware_block(joints, initial) + '\n' + urdf[end:]
