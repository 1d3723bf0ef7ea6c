;; alfworld-mini: cool-tomato (kitchen)
;; Cool the tomato in the fridge, then put it in the microwave (which must be opened first).
;; Display names: Cabinet_bar_6 = cabinet 1, Cabinet_bar_5 = cabinet 2, Cabinet_bar_4 = cabinet 3, Cabinet_bar_3 = cabinet 4, Cabinet_bar_2 = cabinet 5, Cabinet_bar_1 = cabinet 6, CounterTop_bar_1 = countertop 1, DiningTable_bar_1 = diningtable 1, Drawer_bar_1 = drawer 1, Fridge_bar_1 = fridge 1, GarbageCan_bar_1 = garbagecan 1, Microwave_bar_1 = microwave 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, StoveBurner_bar_1 = stoveburner 1
;;                Tomato_bar_2 = tomato 1, Tomato_bar_1 = tomato 2, Apple_bar_1 = apple 1, Lettuce_bar_1 = lettuce 1, Cup_bar_1 = cup 1, Plate_bar_1 = plate 1, Ladle_bar_1 = ladle 1, Pot_bar_1 = pot 1, Egg_bar_1 = egg 1
(define (problem cool_tomato)
    (:domain alfred)
    (:objects
        agent1 - agent
        AppleType - otype
        ButterKnifeType - otype
        CupType - otype
        EggType - otype
        KnifeType - otype
        LadleType - otype
        LettuceType - otype
        PlateType - otype
        PotType - otype
        TomatoType - otype
        CabinetType - rtype
        CounterTopType - rtype
        DiningTableType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        StoveBurnerType - rtype
        Tomato_bar_2 - object
        Tomato_bar_1 - object
        Apple_bar_1 - object
        Lettuce_bar_1 - object
        Cup_bar_1 - object
        Plate_bar_1 - object
        Ladle_bar_1 - object
        Pot_bar_1 - object
        Egg_bar_1 - object
        Cabinet_bar_6 - receptacle
        Cabinet_bar_5 - receptacle
        Cabinet_bar_4 - receptacle
        Cabinet_bar_3 - receptacle
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CounterTop_bar_1 - receptacle
        DiningTable_bar_1 - receptacle
        Drawer_bar_1 - receptacle
        Fridge_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Microwave_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        StoveBurner_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
        loc_bar_14 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Cabinet_bar_6 CabinetType)
        (receptacleAtLocation Cabinet_bar_6 loc_bar_1)
        (openable Cabinet_bar_6)
        (receptacleType Cabinet_bar_5 CabinetType)
        (receptacleAtLocation Cabinet_bar_5 loc_bar_2)
        (openable Cabinet_bar_5)
        (receptacleType Cabinet_bar_4 CabinetType)
        (receptacleAtLocation Cabinet_bar_4 loc_bar_3)
        (openable Cabinet_bar_4)
        (receptacleType Cabinet_bar_3 CabinetType)
        (receptacleAtLocation Cabinet_bar_3 loc_bar_4)
        (openable Cabinet_bar_3)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_5)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_6)
        (openable Cabinet_bar_1)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_7)
        (receptacleType DiningTable_bar_1 DiningTableType)
        (receptacleAtLocation DiningTable_bar_1 loc_bar_8)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_9)
        (openable Drawer_bar_1)
        (receptacleType Fridge_bar_1 FridgeType)
        (receptacleAtLocation Fridge_bar_1 loc_bar_10)
        (openable Fridge_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_11)
        (receptacleType Microwave_bar_1 MicrowaveType)
        (receptacleAtLocation Microwave_bar_1 loc_bar_12)
        (openable Microwave_bar_1)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_13)
        (receptacleType StoveBurner_bar_1 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_1 loc_bar_14)
        (objectType Tomato_bar_2 TomatoType)
        (inReceptacle Tomato_bar_2 Sink_bar_1_bar_SinkBasin)
        (objectAtLocation Tomato_bar_2 loc_bar_13)
        (pickupable Tomato_bar_2)
        (heatable Tomato_bar_2)
        (coolable Tomato_bar_2)
        (cleanable Tomato_bar_2)
        (objectType Tomato_bar_1 TomatoType)
        (inReceptacle Tomato_bar_1 CounterTop_bar_1)
        (objectAtLocation Tomato_bar_1 loc_bar_7)
        (pickupable Tomato_bar_1)
        (heatable Tomato_bar_1)
        (coolable Tomato_bar_1)
        (cleanable Tomato_bar_1)
        (objectType Apple_bar_1 AppleType)
        (inReceptacle Apple_bar_1 CounterTop_bar_1)
        (objectAtLocation Apple_bar_1 loc_bar_7)
        (pickupable Apple_bar_1)
        (heatable Apple_bar_1)
        (coolable Apple_bar_1)
        (cleanable Apple_bar_1)
        (objectType Lettuce_bar_1 LettuceType)
        (inReceptacle Lettuce_bar_1 DiningTable_bar_1)
        (objectAtLocation Lettuce_bar_1 loc_bar_8)
        (pickupable Lettuce_bar_1)
        (coolable Lettuce_bar_1)
        (cleanable Lettuce_bar_1)
        (objectType Cup_bar_1 CupType)
        (inReceptacle Cup_bar_1 Microwave_bar_1)
        (objectAtLocation Cup_bar_1 loc_bar_12)
        (pickupable Cup_bar_1)
        (heatable Cup_bar_1)
        (coolable Cup_bar_1)
        (cleanable Cup_bar_1)
        (isReceptacleObject Cup_bar_1)
        (objectType Plate_bar_1 PlateType)
        (inReceptacle Plate_bar_1 Cabinet_bar_5)
        (objectAtLocation Plate_bar_1 loc_bar_2)
        (pickupable Plate_bar_1)
        (heatable Plate_bar_1)
        (coolable Plate_bar_1)
        (cleanable Plate_bar_1)
        (isReceptacleObject Plate_bar_1)
        (objectType Ladle_bar_1 LadleType)
        (inReceptacle Ladle_bar_1 Drawer_bar_1)
        (objectAtLocation Ladle_bar_1 loc_bar_9)
        (pickupable Ladle_bar_1)
        (cleanable Ladle_bar_1)
        (objectType Pot_bar_1 PotType)
        (inReceptacle Pot_bar_1 StoveBurner_bar_1)
        (objectAtLocation Pot_bar_1 loc_bar_14)
        (pickupable Pot_bar_1)
        (coolable Pot_bar_1)
        (cleanable Pot_bar_1)
        (isReceptacleObject Pot_bar_1)
        (objectType Egg_bar_1 EggType)
        (inReceptacle Egg_bar_1 Fridge_bar_1)
        (objectAtLocation Egg_bar_1 loc_bar_10)
        (pickupable Egg_bar_1)
        (heatable Egg_bar_1)
        (coolable Egg_bar_1)
        (cleanable Egg_bar_1)
        (canContain CabinetType CupType)
        (canContain CabinetType LadleType)
        (canContain CabinetType PlateType)
        (canContain CabinetType PotType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType CupType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType LadleType)
        (canContain CounterTopType LettuceType)
        (canContain CounterTopType PlateType)
        (canContain CounterTopType PotType)
        (canContain CounterTopType TomatoType)
        (canContain DiningTableType AppleType)
        (canContain DiningTableType CupType)
        (canContain DiningTableType EggType)
        (canContain DiningTableType LadleType)
        (canContain DiningTableType LettuceType)
        (canContain DiningTableType PlateType)
        (canContain DiningTableType PotType)
        (canContain DiningTableType TomatoType)
        (canContain DrawerType LadleType)
        (canContain FridgeType AppleType)
        (canContain FridgeType CupType)
        (canContain FridgeType EggType)
        (canContain FridgeType LettuceType)
        (canContain FridgeType PlateType)
        (canContain FridgeType PotType)
        (canContain FridgeType TomatoType)
        (canContain GarbageCanType AppleType)
        (canContain GarbageCanType EggType)
        (canContain GarbageCanType LettuceType)
        (canContain GarbageCanType TomatoType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType CupType)
        (canContain MicrowaveType EggType)
        (canContain MicrowaveType PlateType)
        (canContain MicrowaveType TomatoType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType CupType)
        (canContain SinkBasinType EggType)
        (canContain SinkBasinType LadleType)
        (canContain SinkBasinType LettuceType)
        (canContain SinkBasinType PlateType)
        (canContain SinkBasinType PotType)
        (canContain SinkBasinType TomatoType)
        (canContain StoveBurnerType PotType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (coolable ?o)
                    (objectType ?o TomatoType)
                    (receptacleType ?r MicrowaveType)
                    (isCool ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
